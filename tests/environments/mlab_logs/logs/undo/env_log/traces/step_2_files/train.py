with open('submission.csv', 'w') as f:
    f.write('Id,SalePrice\n1,10\n2,20\n3,31\n')